// Test helper (Memory Studio): runs one of real Mastra's functions over a list of inputs, for the fuzz
// parity test (tests/fuzz/test_fuzz_parity.py). usage: node studio-fuzz-worker.mjs FUNCTION INPUT_JSON OUT_JSON
// FUNCTION: strip-groups | reflector | observer | count | count-async | metadata-filter | metadata-match
// INPUT_JSON: a JSON list of inputs (see each function below); OUT_JSON: a list as long, each entry
// {ok: result} or {error: "<constructor name>: <message>"} when Mastra throws.
// parseReflectorOutput is not exported by @mastra/memory, so the worker imports the bundle chunk that
// defines it through a copy with one more export line (written once beside the chunk).
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Extractor, TokenCounter, parseObserverOutput, stripObservationGroups } from '@mastra/memory/processors';
import { storageMessageMatchesMetadataFilter, validateStorageMetadataFilter } from '@mastra/core/storage';
import { z } from 'zod';

const [fn, inputFile, outFile] = process.argv.slice(2);
const inputs = JSON.parse(readFileSync(inputFile, 'utf8'));

async function internal(name) {
  const require = createRequire(import.meta.url);
  const processors = require.resolve('@mastra/memory/processors').replace(/index\.c?js$/, 'index.js');
  const chunkName = readFileSync(processors, 'utf8').match(/from "\.\.\/(src-[^"]+\.js)"/)[1];
  const dist = dirname(dirname(processors));
  const copy = join(dist, `studio-fuzz-${chunkName}`);
  if (!existsSync(copy)) {
    const tmp = `${copy}.${process.pid}.tmp`;
    writeFileSync(tmp, `${readFileSync(join(dist, chunkName), 'utf8')}\nexport { ${name} as studioFuzz_${name} };\n`);
    renameSync(tmp, copy);
  }
  return (await import(pathToFileURL(copy).href))[`studioFuzz_${name}`];
}

const KEYS = { 'current-task': 'currentTask', 'suggested-response': 'suggestedResponse', 'thread-title': 'threadTitle' };
const extractors = slugs => slugs.map(
  slug => new Extractor({ name: slug, instructions: slug, schema: z.string(), metadataKeyPath: KEYS[slug] }, true),
);
const counter = model => new TokenCounter(model ? { model } : undefined);

const functions = {
  // input: the observation log (a string)
  'strip-groups': async () => text => stripObservationGroups(text),
  // input: a Reflector answer; result: {observations, currentTask, suggestedResponse, degenerate}
  reflector: async () => {
    const parse = await internal('parseReflectorOutput');
    const slugs = extractors(['current-task', 'suggested-response']);
    return text => {
      const r = parse(text, undefined, slugs);
      return { observations: r.observations, currentTask: r.extractedValues?.['current-task'] ?? null,
        suggestedResponse: r.suggestedContinuation ?? null, degenerate: Boolean(r.degenerate) };
    };
  },
  // input: an Observer answer (default slugs current-task, suggested-response, thread-title)
  observer: async () => {
    const slugs = extractors(['current-task', 'suggested-response', 'thread-title']);
    return text => {
      const r = parseObserverOutput(text, slugs);
      return { observations: r.observations, currentTask: r.currentTask ?? null,
        suggestedContinuation: r.suggestedContinuation ?? null, threadTitle: r.threadTitle ?? null,
        degenerate: Boolean(r.degenerate) };
    };
  },
  // input: [model or null, MastraDBMessage]
  count: async () => ([model, message]) => counter(model).countMessage(message),
  'count-async': async () => ([model, message]) => counter(model).countMessageAsync(message),
  // input: the filter's JSON text; result: the validated filter (null for "no filter")
  'metadata-filter': async () => text => validateStorageMetadataFilter(JSON.parse(text)) ?? null,
  // input: [stored content (JSON text or object), the filter's JSON text]; result: whether the message matches
  'metadata-match': async () => ([content, filterText]) =>
    storageMessageMatchesMetadataFilter(content, validateStorageMetadataFilter(JSON.parse(filterText))),
};

const run = await functions[fn]();
const out = [];
for (const input of inputs) {
  try {
    out.push({ ok: await run(input) });
  } catch (error) {
    out.push({ error: `${error?.constructor?.name}: ${error?.message}` });
  }
}
writeFileSync(outFile, JSON.stringify(out));
console.log(JSON.stringify({ ok: true, count: out.length }));
process.exit(0);
