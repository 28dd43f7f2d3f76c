#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat server for recording fixtures/tool-desk's cassettes.

It answers POST .../chat/completions: for the request's model and user message, either a
tool call or a text reply, from the SCRIPT below. It shows the pipeline (tools offered, calls
observed, checked), not model reasoning: the "models" here are scripted.

    python3 tool_server.py PORT
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WHERE = "Where is my order 1042?"
REFUND = "Please refund half of order 1042, it cost $80."
HOURS = "When are you open?"

SCRIPT = {
    "desk-small": {
        WHERE: ("call", "order_status", {"order_id": "1042"}),
        REFUND: ("call", "refund", {"order_id": "1042", "amount": 80}),
        HOURS: ("text", "We are open 9 to 5, Monday to Friday."),
    },
    "desk-large": {
        WHERE: ("call", "order_status", {"order_id": "1042"}),
        REFUND: ("call", "refund", {"order_id": "1042", "amount": 40}),
        HOURS: ("call", "order_status", {"order_id": "hours"}),
    },
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        user = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
        entry = SCRIPT.get(body.get("model", ""), {}).get(user)
        if entry is None or not body.get("tools"):
            self.reply(404, {"error": {"message": f"no script for {body.get('model')!r}, {user!r}"}})
            return
        if entry[0] == "call":
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": entry[1], "arguments": json.dumps(entry[2])}}]}
        else:
            message = {"role": "assistant", "content": entry[1]}
        self.reply(200, {
            "id": "gen-1", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if entry[0] == "call" else "stop"}],
            "usage": {"prompt_tokens": 60, "completion_tokens": 12,
                      "cost": 0.00002 if body["model"] == "desk-small" else 0.0002},
        })

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
