// The loop every Node framework worker of tests/cli/frameworks.rs shares: a case's input
// names the call (plain, stream, structured, tool), the worker's function for it returns
// the output ({answer}), posted to EVALS_ANSWER_URL, off stdout.
const readline = require('readline');

// Looks a word up: the one tool every worker offers the model.
exports.lookup = (q) => q.toUpperCase();

// The tool's parameters and the structured output's schema, as JSON Schema.
exports.LOOKUP_PARAMS = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false };
exports.ANSWER = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false };

exports.serve = async (calls) => {
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const msg = JSON.parse(line);
    const kind = msg.case.input;
    const out = { id: msg.id };
    try {
      out.output = await calls[kind](kind);
    } catch (e) {
      out.error = `${e.name}: ${e.message}`;
    }
    const r = await fetch(process.env.EVALS_ANSWER_URL, { method: 'POST', body: JSON.stringify(out) });
    await r.text();
  }
};
