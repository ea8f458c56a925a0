import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { SupportDeskModule } from './app.module.js';

/** `npm run example:nest`: the desk on http://localhost:3000 (PORT to change it). */
async function main(): Promise<void> {
  const app = await NestFactory.create(SupportDeskModule.register());
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  console.log(`Support desk on http://localhost:${port}/api/support/sessions/:id/messages (see examples/nest-support-desk/README.md)`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
