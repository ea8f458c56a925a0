/**
 * Figure 4's checkpoint figures alone, for comparing stores or builds quickly:
 * `node dist/bench/checkpoint-only.js [turns] [long-session turns]`.
 */
import { checkpointFigures, longSessionFigures } from './checkpoint.js';

const turns = Number(process.argv[2] ?? 800);
const longTurns = Number(process.argv[3] ?? 200);
const cp = await checkpointFigures(turns, 100);
const long = await longSessionFigures(longTurns);
const f = (n: number) => n.toFixed(1);
console.log(
  `checkpoint median ${f(cp.checkpointUs)} µs (p90 ${f(cp.checkpointP90Us)}), store cost per turn ${f(cp.storeCostUsPerTurn)} µs over a ${f(cp.turnUsWithout)} µs turn; ` +
    `${long.turns}-turn session: first tenth ${f(long.firstTenthUs)} µs, last tenth ${f(long.lastTenthUs)} µs (transcript ${long.transcriptAtLastTenth}); straight to the store ${f(long.storeOnlyFirstTenthUs)} / ${f(long.storeOnlyLastTenthUs)} µs`,
);
process.exit(0);
