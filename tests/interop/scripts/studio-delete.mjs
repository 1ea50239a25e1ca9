// Test helper (Memory Studio): lets real Mastra delete messages (Memory.deleteMessages) on a copy of a
// memory.db, so the studio's delete can be compared with it. Prints {ok: true}.
// usage: node studio-delete.mjs DB_FILE IDS_JSON
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';

const [file, idsJson] = process.argv.slice(2);
const storage = new LibSQLStore({ id: 'studio-delete', url: `file:${file}` });
await storage.init();
const memory = new Memory({ storage, options: { lastMessages: 10 } });
await memory.deleteMessages(JSON.parse(idsJson));
console.log(JSON.stringify({ ok: true }));
process.exit(0);
