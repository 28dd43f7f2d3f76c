"""The loop every Python framework worker of tests/cli/frameworks.rs shares.

A case's input names the call to make: `plain`, `stream`, `structured` or `tool`; the
worker's function for it returns the output, `{"answer": ...}`. The answer is posted to
EVALS_ANSWER_URL, off stdout, where libraries print what they like (litellm's banners).
"""
import json
import os
import sys
import urllib.request

from pydantic import BaseModel


class Answer(BaseModel):
    """The structured output every worker asks for."""

    answer: str


def lookup(q: str) -> str:
    """Look a word up: the one tool every worker offers the model."""
    return q.upper()


# The tool as the OpenAI chat completions API declares it.
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a word up.",
        "parameters": {
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
        },
    },
}


def user(q):
    return [{"role": "user", "content": q}]


def serve(calls):
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg["case"]["input"]
        out = {"id": msg["id"]}
        try:
            out["output"] = calls[kind](kind)
        except Exception as e:  # the case's error, named
            out["error"] = "%s: %s" % (type(e).__name__, e)
        body = json.dumps(out).encode()
        urllib.request.urlopen(os.environ["EVALS_ANSWER_URL"], body).read()
