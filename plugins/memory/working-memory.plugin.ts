import { IsString, MaxLength } from 'class-validator';
import {
  Describe,
  Hook,
  inject,
  Plugin,
  PLUGIN_CONFIG,
  Requires,
  Tool,
  TrellisError,
  type ChatMessage,
  type EraseRequest,
  type HookContext,
  type PluginHost,
  type PluginClass,
  type PluginLifecycle,
  type PluginRecords,
  type ToolContext,
} from 'trellis/plugin';
import { MEMORY_USER_KEY, memoryUser } from './user-key.js';
import { WorkingMemoryConfig } from './working-memory.config.js';

/** The default working-memory record: free notes about the user. */
export class WorkingMemoryNotes {
  @Describe(
    'Everything worth remembering about the user across conversations: name, preferences, goals, open tasks. Short lines.',
  )
  @IsString()
  @MaxLength(4000)
  notes!: string;
}

/** The record key of a user's working memory. */
const RECORD = 'working';

/** Options of {@link workingMemoryPlugin}. */
export interface WorkingMemoryOptions {
  /** The plugin's name (and its tool's prefix). Default `memory.working`. */
  readonly name?: string;
  /** What the record is, for the model: how the tool is described. */
  readonly description?: string;
}

/** What a working-memory plugin offers the host besides its tool and hook. */
export interface WorkingMemoryPluginApi {
  /** A user's record, or `undefined` when the agent has not written one. */
  read(userId: string): Promise<unknown>;
}

/**
 * A working-memory plugin over a class-validator DTO: one record of that shape per user,
 * kept in the session store (the plugin's records), so it follows the user across sessions.
 *
 * - `<name>.update` (a tool; its input is the DTO, so the model sees its schema and its
 *   arguments are validated): replaces the user's record with the one given. The model is
 *   shown the current record, so it sends it whole with its changes.
 * - `memory.read`: adds one system message with the user's record (or says it is empty).
 *
 * The user is the host's `app.user_id` — required by the tool, optional for the hook (an
 * anonymous session gets no working memory) — never an argument the model could change, so
 * no user reads or writes another's record. `app.erase({ userId })` deletes the record.
 *
 * @example
 * class Profile { @IsOptional() @IsString() name?: string; @IsOptional() @IsIn(['metric', 'imperial']) units?: string }
 * await app.install(workingMemoryPlugin(Profile, { description: "The user's name and preferred units" }));
 */
export function workingMemoryPlugin<T extends object>(
  dto: new () => T,
  options: WorkingMemoryOptions = {},
): PluginClass<WorkingMemoryPluginApi> {
  const name = options.name ?? 'memory.working';
  const tool = `${name}.update`;
  const what = options.description ?? 'what you know about the user that lasts beyond this conversation';

  @Plugin({
    name,
    version: '1.0.0',
    description: `A working-memory record per user (${dto.name})`,
    config: WorkingMemoryConfig,
  })
  class WorkingMemoryPlugin implements PluginLifecycle, WorkingMemoryPluginApi {
    private records: PluginRecords | undefined;

    constructor(@inject(PLUGIN_CONFIG) private readonly config: WorkingMemoryConfig) {}

    onInstall(host: PluginHost): void {
      this.records = host.records;
    }

    @Tool({
      name: tool,
      input: dto,
      description: `Saves your working memory about this user: ${what}. Send the whole record with your changes (it replaces the saved one). Use it when you learn something that will matter in later conversations; not for facts about this conversation only.`,
    })
    @Requires(MEMORY_USER_KEY)
    async update(input: T, ctx: ToolContext): Promise<{ saved: true }> {
      const user = memoryUser(ctx)!;
      const record = JSON.parse(JSON.stringify(input)) as unknown;
      const size = JSON.stringify(record).length;
      if (size > this.config.maxChars) {
        throw new TrellisError(
          'ToolInput',
          `The working memory would be ${size} characters, over its limit of ${this.config.maxChars}`,
          { hint: 'Shorten it: keep what will matter later, drop the rest' },
        );
      }
      await this.records!.put(user, RECORD, record);
      return { saved: true };
    }

    @Hook('memory.read')
    @Requires({ key: MEMORY_USER_KEY, optional: true })
    async inject(_payload: unknown, ctx: HookContext): Promise<ChatMessage[]> {
      const user = memoryUser(ctx);
      if (!user) return [];
      const record = await this.records!.get(user, RECORD);
      const body = record ? JSON.stringify(record.value, null, 2) : '(empty: nothing saved yet)';
      return [
        {
          role: 'system',
          content: `Your working memory about this user (${what}), kept across conversations; update it with ${tool}:\n${body}`,
        },
      ];
    }

    async read(userId: string): Promise<unknown> {
      return (await this.records!.get(userId, RECORD))?.value;
    }

    /** A user's erasure deletes their record. */
    async onErase(request: EraseRequest): Promise<void> {
      if (request.selector.userId !== undefined) await this.records!.delete({ subject: request.selector.userId });
    }
  }
  Object.defineProperty(WorkingMemoryPlugin, 'name', { value: `WorkingMemory(${dto.name})` });
  return WorkingMemoryPlugin;
}

/** Working memory with free notes ({@link WorkingMemoryNotes}), named `memory.working`. */
export const WorkingMemory = workingMemoryPlugin(WorkingMemoryNotes);
