#!/usr/bin/env python3
"""A promptfoo script provider as an evals exec adapter worker.

Written by `evals import promptfoo` beside promptfoo_provider.json, which holds the
provider (`exec:COMMAND`, `python:FILE[:FUNCTION]` or `file://FILE.py[:FUNCTION]`), its
config, the folder it runs from (the promptfoo config's) and the prompts by dataset. Per
case: the dataset's prompt rendered with the case's vars (`{{ var }}`), then the provider
called as promptfoo calls it: an exec command gets the prompt, the options and the context
as its last three arguments and its stdout is the output; a Python file's function
(`call_api` by default) gets (prompt, options, context) and returns {"output"} or {"error"}.
"""
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "promptfoo_provider.json"), encoding="utf-8") as f:
    SETTINGS = json.load(f)
BASE = SETTINGS["base"]
PROVIDER = SETTINGS["provider"]
OPTIONS = {"config": SETTINGS.get("config") or {}}
VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def render(template, variables):
    def sub(m):
        v = variables.get(m.group(1))
        if v is None:
            raise KeyError("the prompt uses {{ %s }} but this case has no such var" % m.group(1))
        return v if isinstance(v, str) else json.dumps(v)

    return VAR.sub(sub, template)


def python_function():
    spec = PROVIDER.split(":", 1)[1] if PROVIDER.startswith("python:") else PROVIDER[len("file://"):]
    path, _, name = spec.partition(".py:")
    path = path if path.endswith(".py") else path + ".py"
    if not name and spec.endswith(".py"):
        path = spec
    module_spec = importlib.util.spec_from_file_location("promptfoo_provider_module", os.path.join(BASE, path))
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(os.path.join(BASE, path))))
    module_spec.loader.exec_module(module)
    return getattr(module, name or "call_api")


CALL = None if PROVIDER.startswith("exec:") else python_function()


def call(prompt, context):
    if CALL is not None:
        old = os.getcwd()
        os.chdir(BASE)
        try:
            result = CALL(prompt, OPTIONS, context)
        finally:
            os.chdir(old)
        if not isinstance(result, dict):
            return None, "the provider returned %r, not {output} or {error}" % (result,)
        return result.get("output"), result.get("error")
    argv = shlex.split(PROVIDER[len("exec:"):].strip())
    p = subprocess.run(
        argv + [prompt, json.dumps(OPTIONS), json.dumps(context)],
        cwd=BASE,
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        return None, "exit %d: %s" % (p.returncode, p.stderr.strip()[:500])
    return p.stdout.strip(), None


for line in sys.stdin:
    req = json.loads(line)
    case = req["case"]
    variables = case["input"] if isinstance(case["input"], dict) else {"input": case["input"]}
    try:
        prompt = render(SETTINGS["prompts"][case["dataset"]], variables)
        output, error = call(prompt, {"vars": variables, "prompt": {"raw": prompt}})
    except Exception as e:  # the case's failure, named
        output, error = None, "%s: %s" % (type(e).__name__, e)
    answer = {"id": req["id"], "output": output}
    if error:
        answer["error"] = str(error)
    print(json.dumps(answer), flush=True)
