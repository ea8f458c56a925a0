import { IsInt, IsNotEmpty, IsOptional, IsString, Min } from 'class-validator';
import { Describe } from 'trellis/plugin';

/** Arguments of the `memory.transcript.recall` tool. */
export class RecallInput {
  @IsOptional()
  @IsInt()
  @Min(1)
  @Describe('How many of the most recent matching exchanges to return')
  last?: number;

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @Describe('Only exchanges whose message or reply contains this text (case-insensitive)')
  contains?: string;
}
