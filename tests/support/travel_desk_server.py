#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat server for recording fixtures/travel-desk's cassettes:
the two contenders' replies and the judge's verdicts on them.

POST .../chat/completions answers, by the request's model:
- trip-small, trip-large: for the user message, a tool call or a text reply, from SCRIPT
  (refused with a 404 unless the request offers the suite's tools);
- trip-judge: a JSON verdict {"score", "reason"} from VERDICTS, the first rule whose
  traveller and needle are both in the judge's prompt (a 404 when none is, so a changed
  rubric or reply shows when re-recording, instead of a made-up verdict).
It shows the pipeline (tools offered, calls observed and checked, a judge recorded), not
model reasoning: the "models" here are scripted.

    python3 travel_desk_server.py PORT
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FLIGHT = "Find me a flight from Lisbon to Berlin on 2026-03-14."
HOTEL = "Book me a hotel in Porto for 3 nights."
VISA = "Do I need a visa to visit Japan for a week as an EU citizen?"

FLIGHT_CALL = ("call", "search_flights",
               {"origin": "Lisbon", "destination": "Berlin", "date": "2026-03-14"})
VISA_TEXT = ("text", "No visa is needed: EU citizens can visit Japan visa-free "
                     "for up to 90 days as tourists. Bring a passport valid for the stay.")

SCRIPT = {
    "trip-small": {
        FLIGHT: FLIGHT_CALL,
        HOTEL: ("call", "book_hotel", {"city": "Porto", "nights": 2}),
        VISA: VISA_TEXT,
    },
    "trip-large": {
        FLIGHT: FLIGHT_CALL,
        HOTEL: ("call", "book_hotel", {"city": "Porto", "nights": 3}),
        VISA: ("call", "search_flights", {"origin": "Brussels", "destination": "Tokyo",
                                          "date": "2026-04-01"}),
    },
}

# (traveller, needle in the judge's prompt, score on [1, 5], reason): first match wins.
VERDICTS = [
    (FLIGHT, '"name":"search_flights"', 5, "Searches Lisbon to Berlin on the asked date."),
    (HOTEL, '"nights":3', 5, "Books Porto for the 3 nights asked."),
    (HOTEL, '"nights":2', 2, "Books Porto for 2 nights; the traveller asked for 3."),
    (VISA, "visa-free", 5, "Answers the visa question correctly, in plain words."),
    (VISA, '"name":"search_flights"', 1, "Searches flights instead of answering the visa question."),
]

USAGE = {
    "trip-small": {"prompt_tokens": 90, "completion_tokens": 20, "cost": 0.00003},
    "trip-large": {"prompt_tokens": 90, "completion_tokens": 20, "cost": 0.0003},
    "trip-judge": {"prompt_tokens": 150, "completion_tokens": 25, "cost": 0.0001},
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        model = body.get("model", "")
        user = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
        if model == "trip-judge":
            verdict = next(({"score": s, "reason": r} for (t, needle, s, r) in VERDICTS
                            if t in user and needle in user), None)
            if verdict is None:
                self.reply(404, {"error": {"message": f"no verdict scripted for: {user!r}"}})
                return
            message = {"role": "assistant", "content": json.dumps(verdict)}
            finish = "stop"
        else:
            entry = SCRIPT.get(model, {}).get(user)
            if entry is None or not body.get("tools"):
                self.reply(404, {"error": {"message": f"no script for {model!r}, {user!r}"}})
                return
            if entry[0] == "call":
                message = {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": entry[1], "arguments": json.dumps(entry[2])}}]}
                finish = "tool_calls"
            else:
                message = {"role": "assistant", "content": entry[1]}
                finish = "stop"
        self.reply(200, {
            "id": "gen-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": USAGE[model],
        })

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
