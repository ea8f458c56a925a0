import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IsInt, IsString, Min } from 'class-validator';
import { injectable } from 'inversify';
import {
  Hook,
  Middleware,
  Plugin,
  ScriptedModel,
  SqliteStore,
  StateKey,
  Tool,
  Trellis,
  suspend,
  type ChatMessage,
  type ModelRequest,
  type NextToolHandler,
  type ScriptedReply,
  type ToolCallInfo,
  type ToolContext,
  type ToolInvocation,
  type ToolResult,
  type Approver,
} from '../../index.js';
import type { ApprovalSettings } from '../../governance.js';
import { startDevServer, type DevServer } from '../../src/hosts/dev/dev-server.js';

/** What the search tool returns: markup a page must show as text, never run. */
export const HOSTILE_TEXT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">';

class SearchInput {
  @IsString() query!: string;
}

class DeleteInput {
  @IsInt() @Min(1) id!: number;
}

/** Counts calls on their way through, so a tool shows a middleware chain. */
@injectable()
export class AuditMiddleware {
  async intercept(_call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    return next();
  }
}

/** Notes: a search that returns hostile markup, and a delete that a gate parks for a human. */
@Plugin({ name: 'notes', version: '1.2.0', description: 'Notes for the dev page tests' })
@StateKey('notes.searches', { scope: 'session', merge: 'commutative', persistent: true, default: 0 })
@Middleware(AuditMiddleware)
export class NotesPlugin {
  static deleted: number[] = [];

  @Tool({ name: 'notes.search', description: 'Search the notes. Tests only.', input: SearchInput })
  search(input: SearchInput, ctx: ToolContext) {
    ctx.update<number>('notes.searches', (n) => (n ?? 0) + 1);
    return `${HOSTILE_TEXT} found "${input.query}"`;
  }

  @Tool({ name: 'notes.delete', description: 'Delete a note by id. Tests only.', input: DeleteInput })
  remove(input: DeleteInput) {
    NotesPlugin.deleted.push(input.id);
    return `deleted note ${input.id}`;
  }

  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    if (call.tool === 'notes.delete')
      return suspend({ message: `Deleting note ${JSON.stringify(call.args)} needs a human <b>yes</b>` });
    return undefined;
  }
}

/** `search X` calls notes.search (`think X` too, saying so first), `delete N` calls notes.delete; after a tool result the model repeats it. */
export function notesModel(delayMs = 0): ScriptedModel {
  return new ScriptedModel(
    (request: ModelRequest): ScriptedReply => {
      const last = request.messages.at(-1) as ChatMessage;
      if (last.role === 'tool')
        return { text: `Tool said: ${last.content}`, usage: { inputTokens: 40, outputTokens: 12 } };
      const [verb, rest = ''] = last.content.split(/\s+(.*)/s);
      if (verb === 'search')
        return {
          toolCalls: [{ name: 'notes.search', args: { query: rest } }],
          usage: { inputTokens: 30, outputTokens: 8 },
        };
      // Text in both rounds: the first says what it does, then calls the tool.
      if (verb === 'think')
        return {
          text: 'Let me look that up.',
          toolCalls: [{ name: 'notes.search', args: { query: rest } }],
          usage: { inputTokens: 30, outputTokens: 8 },
        };
      if (verb === 'delete')
        return {
          toolCalls: [{ name: 'notes.delete', args: { id: Number(rest) } }],
          usage: { inputTokens: 30, outputTokens: 8 },
        };
      return `You said: ${last.content}`;
    },
    { name: 'scripted:notes', delayMs },
  );
}

/** An app over a fresh SQLite file with the notes plugin, and a dev server on a free port. */
export interface DevFixture {
  readonly app: Trellis;
  readonly store: SqliteStore;
  readonly dev: DevServer;
  readonly agent: ReturnType<Trellis['agent']>;
  /** `http://127.0.0.1:<port>` without a trailing slash. */
  readonly base: string;
  close(): Promise<void>;
}

export async function startDevFixture(
  options: { token?: string; delayMs?: number; approver?: Approver; approvals?: ApprovalSettings } = {},
): Promise<DevFixture> {
  NotesPlugin.deleted = [];
  const dir = mkdtempSync(join(tmpdir(), 'trellis-dev-'));
  const store = SqliteStore.open(join(dir, 'trellis.db'));
  const app = Trellis.create({ store, ...(options.approvals && { approvals: options.approvals }) });
  await app.install(NotesPlugin);
  const agent = app.agent({
    name: 'notes-agent',
    model: notesModel(options.delayMs),
    instructions: 'Help with notes.',
  });
  const dev = await startDevServer({
    app,
    agent,
    store,
    port: 0,
    token: options.token,
    ...(options.approver && { approver: options.approver }),
  });
  const base = new URL(dev.url).origin;
  return {
    app,
    store,
    dev,
    agent,
    base,
    async close() {
      await dev.close();
      await app.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
