// Test helper (Memory Studio): Mastra's token estimate of single messages, per model, from real @mastra/memory.
// usage: node studio-token-counter.mjs INPUT_JSON OUT_JSON
// INPUT_JSON: {models: [null | "provider/model"], cases: {name: MastraDBMessage},
//              asyncCases: {name: [model or null, MastraDBMessage]}}
// OUT_JSON:   {cases: {name: [new TokenCounter({model}).countMessages([a fresh copy]) for each model]},
//              asyncCases: {name: [countMessages([copy]), await countMessagesAsync([another copy])]}} (offline)
import { TokenCounter } from '@mastra/memory/processors';
import { readFileSync, writeFileSync } from 'node:fs';

const [inputFile, outFile] = process.argv.slice(2);
const { models, cases, asyncCases } = JSON.parse(readFileSync(inputFile, 'utf8'));
const out = { cases: {}, asyncCases: {} };
const counter = model => new TokenCounter(model ? { model } : undefined);
for (const [name, message] of Object.entries(cases)) {
  out.cases[name] = models.map(model => counter(model).countMessages([structuredClone(message)]));
}
for (const [name, [model, message]] of Object.entries(asyncCases ?? {})) {
  out.asyncCases[name] = [counter(model).countMessages([structuredClone(message)]),
    await counter(model).countMessagesAsync([structuredClone(message)])];
}
writeFileSync(outFile, JSON.stringify(out));
console.log(JSON.stringify({ ok: true }));
process.exit(0);
