// Test helper (Memory Studio): lets real Mastra write working memory with @mastra/memory's
// Memory.updateWorkingMemory, working memory enabled in SCOPE ("resource" or "thread"), on a copy of a store.
// usage: node studio-working-memory.mjs DB THREAD_ID SCOPE TEXT_JSON [--store file|pg|libsql-remote --url URL]
//   TEXT_JSON: the working memory as a JSON string
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';
import { splitArgs, target, loadStore, makeStorage, initTarget } from './stores.mjs';

const { pos: [db, threadId, scope, textJson], store, url } = splitArgs(process.argv.slice(2));
let storage;
if (store === 'file') storage = new LibSQLStore({ id: 'studio-wm', url: `file:${db}` });
else { const t = target(store, url, db); await loadStore(store); await initTarget(t); storage = makeStorage(t, 'studio-wm'); }
await storage.init();
const memory = new Memory({ storage, options: { lastMessages: 10, workingMemory: { enabled: true, scope } } });
const thread = await memory.getThreadById({ threadId });
await memory.updateWorkingMemory({ threadId, resourceId: thread.resourceId, workingMemory: JSON.parse(textJson) });
console.log(JSON.stringify({ ok: true }));
process.exit(0);
