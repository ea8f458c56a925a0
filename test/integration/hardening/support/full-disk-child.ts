/**
 * Runs under `ulimit -f` (a file-size limit): a turn whose checkpoint grows the store past the
 * limit fails with the OS's write error. Prints, as one JSON line, what each door answered:
 * `{ "s1": { code, hint } | "ok", "new": … }`.
 */
import 'reflect-metadata';
import { ScriptedModel, SqliteStore, Trellis, TrellisError } from '../../../../index.js';

// Past the limit the kernel sends SIGXFSZ, which ends a process by default; ignored, the write fails with EFBIG instead.
process.on('SIGXFSZ', () => undefined);
const path = process.argv[2]!;
const store = SqliteStore.open(path);
const app = Trellis.create({ store });
const agent = app.agent({ name: 'a', model: new ScriptedModel(() => 'z'.repeat(2_000_000)), instructions: '' });
const answers: Record<string, unknown> = {};
for (const id of ['s1', 'new']) {
  try {
    await agent.session(id).send('a long answer, please');
    answers[id] = 'ok';
  } catch (error) {
    answers[id] = TrellisError.is(error) ? { code: error.code, hint: error.hint } : { raw: String(error) };
  }
}
await app.stop();
await store.close();
process.stdout.write(`${JSON.stringify(answers)}\n`);
