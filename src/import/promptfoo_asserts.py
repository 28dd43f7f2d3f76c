#!/usr/bin/env python3
"""promptfoo's code assertions for a suite `evals import promptfoo` wrote.

An evals exec scorer (docs/src/scorers.md): one JSON line in per case, one line out. The
case's metadata.promptfoo_code lists the assertions: {type, value, threshold, line}.
`python` runs here, `javascript` through node, `contains-json` looks for a JSON value in
the output. promptfoo's rules: a boolean passes or fails; a number is the score and
passes above 0 (at or above `threshold` when one is given); a mapping is a grading result
{pass, score, reason}. `not-` inverts.
"""
import json
import subprocess
import sys

NODE = r"""
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const output = input.output, context = input.context;
const body = input.code.includes('\n') ? input.code : 'return ' + input.code;
Promise.resolve(new Function('output', 'context', body)(output, context)).then(
  (r) => process.stdout.write(JSON.stringify({ result: r === undefined ? null : r })),
  (e) => process.stdout.write(JSON.stringify({ error: String(e) })),
);
"""


def run_python(code, output, context):
    env = {"output": output, "context": context, "json": json}
    if "\n" in code.strip():
        lines = "\n".join("    " + l for l in code.splitlines())
        exec("def __assert(output, context):\n" + lines, env)
        return env["__assert"](output, context)
    return eval(code, env)


def run_javascript(code, output, context):
    p = subprocess.run(
        ["node", "-e", NODE],
        input=json.dumps({"code": code, "output": output, "context": context}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if p.returncode != 0:
        raise RuntimeError("node: " + p.stderr.strip()[:300])
    answer = json.loads(p.stdout)
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return answer["result"]


def contains_json(output):
    decoder = json.JSONDecoder()
    for i, c in enumerate(output):
        if c in "{[":
            try:
                decoder.raw_decode(output[i:])
                return True
            except ValueError:
                pass
    return False


def grade(a, output, context):
    """(passed, score, reason) of one assertion."""
    kind = a["type"]
    inverse = kind.startswith("not-")
    base = kind[4:] if inverse else kind
    threshold = a.get("threshold")
    if base == "contains-json":
        result = contains_json(output)
    elif base == "python":
        result = run_python(a["value"], output, context)
    else:
        result = run_javascript(a["value"], output, context)
    if isinstance(result, bool):
        passed, score, reason = result, 1.0 if result else 0.0, ""
    elif isinstance(result, (int, float)):
        score = float(result)
        passed = score >= threshold if threshold is not None else score > 0
        reason = "score %s" % score
    elif isinstance(result, dict) and "pass" in result:
        passed = bool(result["pass"])
        score = float(result.get("score", 1.0 if passed else 0.0))
        reason = str(result.get("reason", ""))
    else:
        raise RuntimeError("the assertion returned %r, not a boolean, number or grading result" % (result,))
    if inverse:
        passed, score = not passed, 1.0 - score
    return passed, min(1.0, max(0.0, score)), reason


def main():
    for line in sys.stdin:
        req = json.loads(line)
        if "verify" in req:
            print(json.dumps({"id": req["id"], "problems": []}), flush=True)
            continue
        case, reply = req["case"], req["reply"]
        code = (case.get("metadata") or {}).get("promptfoo_code") or []
        if not code:
            # Nothing to check: the metric does not apply (the value is the protocol's).
            print(json.dumps({"id": req["id"], "value": 1.0, "metrics": {"code": None}}), flush=True)
            continue
        out = reply.get("output")
        output = out if isinstance(out, str) else (reply.get("raw") or json.dumps(out))
        inp = case.get("input")
        context = {"vars": inp if isinstance(inp, dict) else {}, "prompt": None}
        scores, passed, diagnostics = [], True, {}
        for a in code:
            where = "%s (line %s)" % (a["type"], a.get("line"))
            try:
                ok, score, reason = grade(a, output, context)
            except Exception as e:  # an assertion that throws fails, as in promptfoo
                ok, score, reason = False, 0.0, "error: %s" % e
            scores.append(score)
            passed = passed and ok
            if not ok:
                diagnostics[where] = reason or "failed"
        print(
            json.dumps(
                {
                    "id": req["id"],
                    "metrics": {"code": sum(scores) / len(scores)},
                    "passed": passed,
                    "diagnostics": diagnostics,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
