#!/usr/bin/env python3
"""Answers every chat completion with the JSON object at the end of the user message.
Used to record the replay benchmark's cassettes, and as the model of the live benchmark:
python3 answer_server.py PORT [DELAY_SECONDS]"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes; no 40 ms stalls

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        time.sleep(DELAY)
        user = body["messages"][-1]["content"]
        text = user[user.rfind("{"):]
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}],
                           "usage": {"prompt_tokens": 40, "completion_tokens": 12, "cost": 0.00001}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


DELAY = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
ThreadingHTTPServer.request_queue_size = 256
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
