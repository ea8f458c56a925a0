import 'reflect-metadata';
import { IsString } from 'class-validator';
import { Hook, Plugin, ScriptedModel, suspend, Tool, Trellis, type ToolCallInfo } from 'trellis';
import type { SessionStore } from 'trellis';

class ExportInput {
  @IsString() name!: string;
}

/** What the protocol tests share: a tool that needs approval, and a count of its runs. */
export const exportRuns: string[] = [];

/** `files.export` waits for a human; `files.count` runs at once. */
@Plugin({ name: 'files', version: '1.0.0', description: 'Exports files, after approval' })
export class ExportPlugin {
  @Tool({ name: 'files.export', input: ExportInput, description: 'Export a report to a file.' })
  export(input: ExportInput) {
    exportRuns.push(input.name);
    return { written: `${input.name}.csv`, rows: 3 };
  }

  @Tool({ name: 'files.count', input: ExportInput, description: 'Count the rows of a report.' })
  count(input: ExportInput) {
    return input.name.length;
  }

  /** Parked with every decision allowed (approve, reject, edit). */
  @Tool({ name: 'files.purge', input: ExportInput, description: 'Delete a report.' })
  purge(input: ExportInput) {
    exportRuns.push(`purged ${input.name}`);
    return `purged ${input.name}`;
  }

  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    if (call.tool === 'files.purge') return suspend('Delete the report?');
    return call.tool === 'files.export'
      ? suspend({ message: 'Write the CSV file?', allowedDecisions: ['approve', 'reject'] })
      : undefined;
  }
}

/** While `gate` is set, the model waits for it before answering a user message that says "slowly": a turn kept running. */
export const slowTurns: { gate?: Promise<void> } = {};

/**
 * A model that counts, then asks to export (parked by the gate), then answers with what the
 * tool said — or that nothing was written when the call was rejected. Fresh random call ids.
 */
export function exportModel(): ScriptedModel {
  return new ScriptedModel((request) => {
    const last = request.messages.at(-1);
    if (last?.role === 'user') {
      const reply = {
        toolCalls: [
          {
            id: `call_${Math.random().toString(36).slice(2, 10)}`,
            name: 'files.export',
            args: { name: 'top-customers' },
          },
        ],
      };
      return slowTurns.gate && last.content.includes('slowly') ? slowTurns.gate.then(() => reply) : reply;
    }
    const content = typeof last?.content === 'string' ? last.content : '';
    return /Rejected|rejected/.test(content) ? 'I did not write the file.' : `Exported: ${content}`;
  });
}

/** An app with the export plugin and an agent named `desk`. */
export async function exportApp(store?: SessionStore): Promise<{ app: Trellis; agent: ReturnType<Trellis['agent']> }> {
  const app = Trellis.create(store ? { store } : {});
  await app.install(ExportPlugin);
  const agent = app.agent({ name: 'desk', model: exportModel(), instructions: 'You export reports.' });
  return { app, agent };
}
