import 'reflect-metadata';
import { Container, injectable, inject } from 'inversify';
export class Dep { v = 42; }
@injectable()
export class Thing { constructor(@inject(Dep) public readonly dep: Dep) {} }
export function make() { const c = new Container(); c.bind(Dep).toSelf().inSingletonScope(); c.bind(Thing).toSelf(); return c.get(Thing); }
