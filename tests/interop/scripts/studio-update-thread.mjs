// Test helper (Memory Studio): lets real Mastra update a thread with @mastra/memory's Memory.updateThread
// (title and metadata, metadata merged into the stored object) on a copy of a store. Prints the returned thread.
// usage: node studio-update-thread.mjs DB THREAD_ID ARGS_JSON [--store file|pg|libsql-remote --url URL]
//   ARGS_JSON: {"title"?: string, "metadata"?: object}
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';
import { splitArgs, target, loadStore, makeStorage, initTarget } from './stores.mjs';

const { pos: [db, id, argsJson], store, url } = splitArgs(process.argv.slice(2));
let storage;
if (store === 'file') storage = new LibSQLStore({ id: 'studio-update', url: `file:${db}` });
else { const t = target(store, url, db); await loadStore(store); await initTarget(t); storage = makeStorage(t, 'studio-update'); }
await storage.init();
const memory = new Memory({ storage, options: { lastMessages: 10 } });
const args = JSON.parse(argsJson);
const thread = await memory.updateThread({ id, ...args });
console.log(JSON.stringify({ thread: { ...thread, updatedAt: new Date(thread.updatedAt).toISOString() } }));
process.exit(0);
