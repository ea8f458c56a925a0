import { Type } from 'class-transformer';
import { ArrayMaxSize, IsIn, IsNumber, IsString, MaxLength, ValidateNested } from 'class-validator';
import { Describe } from 'trellis/plugin';

/** One customer of the report card. */
export class ReportCustomer {
  @IsString() name!: string;
  @IsString() country!: string;
  @Describe('Paid revenue in currency units') @IsNumber() spent!: number;
}

/**
 * The desk's typed answer for a dashboard: `session.send(question, { output: TopCustomersReport })`
 * ends with `result.output`, an instance of this class, checked field by field.
 */
export class TopCustomersReport {
  @Describe('One line for a dashboard tile') @IsString() @MaxLength(120) headline!: string;
  @IsIn(['USD']) currency!: string;
  @Describe("The sum of the customers' paid revenue") @IsNumber() totalRevenue!: number;
  @ValidateNested({ each: true }) @Type(() => ReportCustomer) @ArrayMaxSize(10) customers!: ReportCustomer[];
}
