// Test helper (Memory Studio): runs real Mastra's parseObserverOutput (@mastra/memory/processors) over
// a list of Observer answers, with the inline extractors each case names, so the studio's port can be
// compared with it. usage: node studio-observer-parse.mjs CASES_JSON_FILE
// CASES: [{name, answer, slugs}]; prints {results: {name: {observations, currentTask, suggestedContinuation,
// threadTitle, degenerate, extractedValues}}}, extractedValues as [slug, value] pairs in Mastra's key order.
import { readFileSync } from 'node:fs';
import { Extractor, parseObserverOutput } from '@mastra/memory/processors';
import { z } from 'zod';

const KEYS = { 'current-task': 'currentTask', 'suggested-response': 'suggestedResponse', 'thread-title': 'threadTitle' };
const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const results = {};
for (const c of cases) {
  const extractors = c.slugs.map(
    slug => new Extractor({ name: slug, instructions: slug, schema: z.string(), metadataKeyPath: KEYS[slug] }, true),
  );
  const r = parseObserverOutput(c.answer, extractors);
  results[c.name] = {
    observations: r.observations,
    currentTask: r.currentTask ?? null,
    suggestedContinuation: r.suggestedContinuation ?? null,
    threadTitle: r.threadTitle ?? null,
    degenerate: Boolean(r.degenerate),
    extractedValues: Object.entries(r.extractedValues ?? {}),
  };
}
console.log(JSON.stringify({ results }));
process.exit(0);
