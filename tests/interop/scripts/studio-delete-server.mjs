// Test helper (Memory Studio): studio-delete.mjs for any store: real Mastra deletes messages (Memory.deleteMessages) on a copy of a
// memory.db, or of a server store's schema, so the studio's delete can be compared with it. Prints {ok: true}.
// usage: node studio-delete-server.mjs DB IDS_JSON [--store file|pg|libsql-remote --url URL]   (DB: the file or schema)
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';
import { splitArgs, target, loadStore, makeStorage, initTarget } from './stores.mjs';

const { pos: [file, idsJson], store, url } = splitArgs(process.argv.slice(2));
let storage;
if (store === 'file') storage = new LibSQLStore({ id: 'studio-delete', url: `file:${file}` });
else { const t = target(store, url, file); await loadStore(store); await initTarget(t); storage = makeStorage(t, 'studio-delete'); }
await storage.init();
const memory = new Memory({ storage, options: { lastMessages: 10 } });
await memory.deleteMessages(JSON.parse(idsJson));
console.log(JSON.stringify({ ok: true }));
process.exit(0);
