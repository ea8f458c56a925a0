/**
 * The agent of `npm run bench:scale`, in process and on its workers alike: a scripted model
 * that answers after a fixed latency, at once for a plain message and after N tool rounds
 * for `r<N>:<text>` (each round one call of `bench.note`, with a fresh random call id, as
 * real providers give).
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { IsString } from 'class-validator';
import { Plugin, ScriptedModel, Tool, type AgentSpec, type ModelRequest } from '../index.js';

export class NoteInput {
  @IsString() text!: string;
}

@Plugin({ name: 'bench', version: '1.0.0', description: 'A tool for tool rounds in the scale bench' })
export class BenchToolsPlugin {
  @Tool({ name: 'bench.note', description: 'Notes a line. Use when asked to.', input: NoteInput })
  note(input: NoteInput): string {
    return `noted ${input.text}`;
  }
}

/** Tool rounds the turn of `request` has run so far, and how many its message asks for. */
function rounds(request: ModelRequest): { done: number; wanted: number } {
  const user = request.messages.findLastIndex((m) => m.role === 'user');
  const wanted = Number(/^r(\d+):/.exec(String(request.messages[user]?.content ?? ''))?.[1] ?? 0);
  return { done: request.messages.slice(user + 1).filter((m) => m.role === 'tool').length, wanted };
}

export function benchAgent(latencyMs: number): AgentSpec {
  const model = new ScriptedModel(async (request) => {
    if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
    const { done, wanted } = rounds(request);
    if (done < wanted)
      return { toolCalls: [{ id: `call_${randomUUID()}`, name: 'bench.note', args: { text: `round ${done + 1}` } }] };
    return `ok: ${String(request.messages.findLast((m) => m.role === 'user')?.content)}`;
  });
  return { name: 'bench', model, instructions: 'Answer.' };
}
