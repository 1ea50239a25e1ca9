// Test helper (Memory Studio): Mastra's token estimate of single messages, per model, from real @mastra/memory.
// usage: node studio-token-counter.mjs INPUT_JSON OUT_JSON
// INPUT_JSON: {models: [null | "provider/model"], cases: {name: MastraDBMessage}}
// OUT_JSON:   {name: [new TokenCounter({model}).countMessages([a fresh copy of the message]) for each model]}
import { TokenCounter } from '@mastra/memory/processors';
import { readFileSync, writeFileSync } from 'node:fs';

const [inputFile, outFile] = process.argv.slice(2);
const { models, cases } = JSON.parse(readFileSync(inputFile, 'utf8'));
const out = {};
for (const [name, message] of Object.entries(cases)) {
  out[name] = models.map(model => new TokenCounter(model ? { model } : undefined).countMessages([structuredClone(message)]));
}
writeFileSync(outFile, JSON.stringify(out));
console.log(JSON.stringify({ ok: true }));
process.exit(0);
