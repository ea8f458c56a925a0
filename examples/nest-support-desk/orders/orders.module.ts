import { Module } from '@nestjs/common';
import { TrellisModule } from 'trellis/nestjs';
import { OrdersPlugin } from './orders.plugin.js';
import { OrdersService } from './orders.service.js';

/** The orders team's module: its service, and the plugin that exposes it to the agent. */
@Module({
  imports: [TrellisModule.forFeature([OrdersPlugin])],
  providers: [OrdersService, OrdersPlugin],
  exports: [OrdersService],
})
export class OrdersModule {}
