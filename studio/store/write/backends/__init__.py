"""The write backends, one per kind of target: `sqlite` (a local file), `libsql_remote` (a libSQL server),
`pg` (PostgreSQL). `studio.store.write.transaction.write_transaction` picks one; each yields a transaction
with the members of `studio.store.write.tx.WriteTx`."""
