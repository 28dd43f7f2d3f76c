"""langchain-openai: ChatOpenAI invoked, streamed, with structured output, and with a bound
tool."""
import json

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from loop import Answer, lookup, serve

llm = ChatOpenAI(model="any")  # OPENAI_BASE_URL, OPENAI_API_KEY: the gateway


def plain(q):
    return json.loads(llm.invoke(q).content)


def stream(q):
    return json.loads("".join(c.content for c in llm.stream(q)))


def structured(q):
    return llm.with_structured_output(Answer, method="json_schema").invoke(q).model_dump()


def tool(q):
    bound = llm.bind_tools([lookup])
    msgs = [HumanMessage(q)]
    m = bound.invoke(msgs)
    call = m.tool_calls[0]
    msgs += [m, ToolMessage(lookup(**call["args"]), tool_call_id=call["id"])]
    return json.loads(bound.invoke(msgs).content)


serve({"plain": plain, "stream": stream, "structured": structured, "tool": tool})
