// Test helper (Memory Studio): Mastra's OM status of one thread, with the ObservationalMemory built from the
// record's stored config exactly as the corpus's oracle.mjs builds it. Run it on a private copy: getStatus may
// write (it creates a missing record, clears a stale buffering flag).
// usage: node studio-om-status.mjs DB_FILE THREAD_ID   prints {pendingTokens, threshold, ..., generationCount}
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';
import { ObservationalMemory } from '@mastra/memory/processors';
import { createClient } from '@libsql/client';
import { createScript } from './scripted-model.mjs';

const [file, threadId] = process.argv.slice(2);
const raw = createClient({ url: `file:${file}` });
const storage = new LibSQLStore({ id: 'studio-om-status', url: `file:${file}` });
const memory = new Memory({ storage, options: { lastMessages: 10 } });
await storage.init();
const { resourceId } = (await raw.execute({ sql: 'SELECT "resourceId" FROM mastra_threads WHERE id = ?', args: [threadId] })).rows[0];
const row = (await raw.execute({ sql: `SELECT config, scope FROM mastra_observational_memory
  WHERE "lookupKey" IN (?, ?) ORDER BY "generationCount" DESC LIMIT 1`, args: [`thread:${threadId}`, `resource:${resourceId}`] })).rows[0];
const cfg = typeof row.config === 'string' ? JSON.parse(row.config) : row.config;
const o = cfg.observation, r = cfg.reflection;
const om = new ObservationalMemory({
  storage: storage.stores.memory, memory, scope: cfg.scope,
  // a model stored as a string ("provider/model") is what Mastra prices attachments for; a stored model object
  // (the scripted model's description) cannot be revived, so the scripted model stands in, as in oracle.mjs
  model: typeof o.model === 'string' ? o.model : createScript({ seed: 1 }).model('observer'),
  observation: { messageTokens: o.messageTokens, bufferTokens: o.bufferTokens ?? false, ...(o.bufferTokens ? { bufferActivation: o.bufferActivation, blockAfter: o.blockAfter } : {}) },
  reflection: { observationTokens: r.observationTokens, ...(o.bufferTokens ? { bufferActivation: r.bufferActivation, blockAfter: r.blockAfter } : {}) },
});
const st = await om.getStatus({ threadId, resourceId });
console.log(JSON.stringify({
  pendingTokens: st.pendingTokens, threshold: st.threshold, effectiveObservationTokensThreshold: st.effectiveObservationTokensThreshold,
  shouldObserve: st.shouldObserve, shouldReflect: st.shouldReflect, scope: st.scope,
  generationCount: st.record.generationCount, observationTokenCount: st.record.observationTokenCount,
}));
process.exit(0);
