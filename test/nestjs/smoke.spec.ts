import 'reflect-metadata';
import { Controller, Get, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';

@Injectable()
class Greeter { hello() { return 'hi'; } }

@Controller('g')
class GController {
  constructor(private readonly greeter: Greeter) {}
  @Get() get() { return { text: this.greeter.hello() }; }
}

@Module({ providers: [Greeter], controllers: [GController] })
class AppModule {}

test('nest boots', async () => {
  const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = ref.createNestApplication();
  await app.init();
  const res = await request(app.getHttpServer()).get('/g');
  expect(res.body).toEqual({ text: 'hi' });
  await app.close();
});
