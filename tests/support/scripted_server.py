#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat server for recording the example suites' cassettes.

It answers POST .../chat/completions in OpenRouter's shape (choices, usage with cost). The
answer comes from a script (JSON): for the request's model and the case whose input.txt the
user message holds, a reply text, token counts, a cost and a latency to simulate. It shows the
pipeline, not model reasoning: the "models" here are scripted.

    python3 scripted_server.py SCRIPT.json DATASETS_DIR PORT
"""
import json
import pathlib
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

script = json.loads(pathlib.Path(sys.argv[1]).read_text())
inputs = {}
for p in pathlib.Path(sys.argv[2]).glob("*/cases/**/input.txt"):
    inputs[p.read_text().strip()] = p.parent.name


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes; no 40 ms stalls

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        model = body.get("model", "")
        user = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
        case = inputs.get(user.strip())
        entry = script.get(model, {}).get(case or "", None)
        if entry is None:
            self.reply(404, {"error": {"message": f"no script for model {model!r}, case {case!r}"}})
            return
        effort = (body.get("reasoning") or {}).get("effort", "default")
        if "text" not in entry:  # settings-specific answers: {"low": {...}, "high": {...}}
            entry = entry.get(effort)
            if entry is None:
                self.reply(404, {"error": {"message": f"no script for effort {effort!r}"}})
                return
        time.sleep(entry.get("latency_s", 0.2))
        text = entry["text"] if isinstance(entry["text"], str) else json.dumps(entry["text"])
        self.reply(200, {
            "id": f"gen-{model}-{case}-{effort}",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": entry["tok_in"], "completion_tokens": entry["tok_out"],
                      "total_tokens": entry["tok_in"] + entry["tok_out"], "cost": entry["cost"]},
        })

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[3])), Handler).serve_forever()
