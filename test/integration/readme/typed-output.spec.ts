import 'reflect-metadata';
import { IsIn, IsNumber, IsString } from 'class-validator';
import { Trellis } from 'trellis';
import { ScriptedModel } from 'trellis/testing';

// The README's "Typed output", kept in step with it: if this breaks, the README is wrong.
class InvoiceSummary {
  @IsString() customer!: string;
  @IsNumber() total!: number;
  @IsIn(['EUR', 'USD']) currency!: string;
}

class Verdict {
  @IsIn(['approve', 'reject']) verdict!: string;
}

describe('the README typed output', () => {
  it('ends the turn with result.output, an InvoiceSummary; a send can ask for another DTO', async () => {
    const model = new ScriptedModel(['{"customer":"Ada","total":42,"currency":"EUR"}', '{"verdict":"approve"}']);
    const app = Trellis.create();

    const agent = app.agent({ name: 'books', model, instructions: 'You read invoices.', output: InvoiceSummary });
    const result = await agent.session('s1').send('Summarise invoice 7');
    const printed: string[] = [];
    if (result.status === 'completed') printed.push(result.output!.total.toFixed(2));

    expect(printed).toEqual(['42.00']);
    expect(result.output).toBeInstanceOf(InvoiceSummary);
    const verdict = await agent.session('s1').send('Approve it?', { output: Verdict });
    expect(verdict.output).toBeInstanceOf(Verdict);
    await app.stop();
  });
});
