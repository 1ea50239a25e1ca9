// Test helper (Memory Studio): prints what real Mastra's clone utilities say of each thread of a file:
// isClone, getSourceThread, listClones (source's resource) and getCloneHistory, as thread ids.
// usage: node studio-clone-lineage.mjs DB_FILE THREAD_ID[,THREAD_ID...]
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';

const [file, ids] = process.argv.slice(2);
const storage = new LibSQLStore({ id: 'studio-clone-lineage', url: `file:${file}` });
await storage.init();
const memory = new Memory({ storage, options: { lastMessages: 10 } });
const out = {};
for (const threadId of ids.split(',')) {
  const thread = await memory.getThreadById({ threadId });
  const source = await memory.getSourceThread(threadId);
  out[threadId] = {
    isClone: thread ? memory.isClone(thread) : null,
    clone: thread ? memory.getCloneMetadata(thread) : null,
    source: source ? source.id : null,
    clones: (await memory.listClones(threadId)).map((t) => t.id),
    history: (await memory.getCloneHistory(threadId)).map((t) => t.id),
  };
}
console.log(JSON.stringify(out));
process.exit(0);
