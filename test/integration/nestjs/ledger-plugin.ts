import { Injectable, Module } from '@nestjs/common';
import { IsString } from 'class-validator';
import { Hook, Plugin, suspend, Tool, type ToolCallInfo } from 'trellis';
import { TrellisModule } from 'trellis/nestjs';

/** A ledger plugin whose gate suspends lines that start with `approve:`, for the cancelPending tests. */
export class RecordInput {
  @IsString() line!: string;
}

/** The lines the ledger tool recorded in one Nest app. */
@Injectable()
export class Ledger {
  readonly lines: string[] = [];
}

@Plugin({ name: 'ledger', version: '1.0.0' })
export class LedgerPlugin {
  constructor(private readonly ledger: Ledger) {}

  @Tool({ name: 'ledger.record', description: 'Records one line in the ledger.', input: RecordInput })
  record(input: RecordInput): string {
    this.ledger.lines.push(input.line);
    return `recorded ${input.line}`;
  }

  @Hook('tool.gate')
  approval(call: ToolCallInfo) {
    const line = String((call.args as { line?: unknown }).line ?? '');
    return line.startsWith('approve:')
      ? suspend({ message: `Record ${line}?`, allowedDecisions: ['approve', 'reject'] })
      : undefined;
  }
}

@Module({ imports: [TrellisModule.forFeature([LedgerPlugin])], providers: [Ledger, LedgerPlugin], exports: [Ledger] })
export class LedgerModule {}
