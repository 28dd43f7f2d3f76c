"""google-genai: generate_content, plain, streamed, a response schema, and a function call
the SDK makes itself (automatic function calling)."""
import json

from google import genai
from google.genai import types

from loop import Answer, lookup, serve

client = genai.Client()  # GOOGLE_GEMINI_BASE_URL, GEMINI_API_KEY: the gateway


def plain(q):
    return json.loads(client.models.generate_content(model="any", contents=q).text)


def stream(q):
    chunks = client.models.generate_content_stream(model="any", contents=q)
    return json.loads("".join(c.text or "" for c in chunks))


def structured(q):
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=Answer)
    return client.models.generate_content(model="any", contents=q, config=config).parsed.model_dump()


def tool(q):
    config = types.GenerateContentConfig(tools=[lookup])
    return json.loads(client.models.generate_content(model="any", contents=q, config=config).text)


serve({"plain": plain, "stream": stream, "structured": structured, "tool": tool})
