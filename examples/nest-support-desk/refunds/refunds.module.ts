import { Module } from '@nestjs/common';
import { TrellisModule } from 'trellis/nestjs';
import { RefundsPlugin } from './refunds.plugin.js';
import { RefundsService } from './refunds.service.js';

/** The refunds team's module: its service, and the plugin that exposes it to the agent. */
@Module({
  imports: [TrellisModule.forFeature([RefundsPlugin])],
  providers: [RefundsService, RefundsPlugin],
  exports: [RefundsService],
})
export class RefundsModule {}
