"""bench/live.sh's exec worker: does nothing but forward each case through the gateway.

For each case line on stdin it sends the case's input to the gateway (`OPENAI_BASE_URL`,
with the worker's token as `OPENAI_API_KEY`) as the prompt adapter sends it (one user
message, `response_format: json_object`), on one kept-alive connection, and prints the
reply's JSON as its answer. Standard library only, so its own cost is a few dozen µs a case.
"""

import http.client
import json
import os
import sys
import urllib.parse

base = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
path = base.path.rstrip("/") + "/chat/completions"
headers = {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
           "Content-Type": "application/json"}
conn = http.client.HTTPConnection(base.hostname, base.port)
for line in sys.stdin:
    case = json.loads(line)
    body = json.dumps({"model": case["model"]["id"],
                       "messages": [{"role": "user", "content": case["case"]["input"]}],
                       "response_format": {"type": "json_object"}})
    conn.request("POST", path, body, headers)
    reply = conn.getresponse()
    data = json.loads(reply.read())
    if reply.status != 200:
        print(json.dumps({"id": case["id"], "output": None, "error": f"{reply.status}: {data}"}), flush=True)
        continue
    text = data["choices"][0]["message"]["content"]
    print(json.dumps({"id": case["id"], "output": json.loads(text), "raw": text}), flush=True)
