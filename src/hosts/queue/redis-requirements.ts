import type { Redis } from 'ioredis';

/**
 * What is wrong with a Redis for the turn queue, as sentences to warn with (none when all
 * is well). A Redis that evicts keys under memory pressure (`maxmemory-policy` other than
 * `noeviction`) silently drops queued jobs, their locks and results; one without
 * persistence (neither AOF nor RDB snapshots) loses every queued turn when it restarts. A
 * Redis that refuses `CONFIG` (some managed services) is said to be unchecked, not wrong.
 */
export async function redisRequirementProblems(redis: Redis): Promise<string[]> {
  const problems: string[] = [];
  let policy: string | undefined;
  try {
    const answer = await redis.config('GET', 'maxmemory-policy');
    policy = answer[1];
  } catch {
    problems.push(
      'Redis refused CONFIG GET maxmemory-policy, so the worker could not check that it is noeviction: make sure it is (a Redis that evicts keys drops queued turns)',
    );
  }
  if (policy !== undefined && policy !== 'noeviction') {
    problems.push(
      `Redis maxmemory-policy is "${policy}", not "noeviction": under memory pressure Redis will delete queued jobs, their locks and results. Set maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction)`,
    );
  }
  try {
    const info = await redis.info('persistence');
    const aof = /^aof_enabled:(\d)/m.exec(info)?.[1];
    const rdbSaves = /^rdb_changes_since_last_save:/m.test(info);
    const save = (await redis.config('GET', 'save').catch(() => ['save', 'unknown']))[1];
    if (aof === '0' && (save === '' || !rdbSaves)) {
      problems.push(
        'Redis has neither AOF nor RDB snapshots enabled: a restart loses every queued turn. Enable appendonly yes (appendfsync everysec) for the queue',
      );
    }
  } catch {
    // INFO refused: nothing more to say than the policy check did.
  }
  return problems;
}
