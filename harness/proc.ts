// Processes as Linux's /proc shows them: CPU time, resident memory, and finding one by its command line.
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks a second, as /proc counts CPU time (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

/** A process's CPU time so far (user + system), in ms; undefined once it has gone. */
export function cpuMs(pid: number): number | undefined {
  try {
    // The command name may hold spaces and parentheses: the fields start after its closing one.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The processes whose command line (arguments joined by spaces) `matches`. */
export function findPids(matches: (commandLine: string) => boolean): number[] {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (matches(commandLine)) found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** The first process whose command line `matches`; undefined when none does. */
export function findPid(matches: (commandLine: string) => boolean): number | undefined {
  return findPids(matches)[0];
}

/** Whether a command line is a PostgreSQL server's: its postmaster (`…/bin/postgres -D …`) or a child it forked. */
export const isPostgres = (commandLine: string): boolean => /^(\S*\/)?postgres(:| |$)/.test(commandLine);

/** A PostgreSQL server's processes on this machine: the postmaster and its children (backends, writers, …). */
export function postgresPids(): number[] {
  return findPids(isPostgres);
}

/** A process's resident set size, in bytes, from /proc (Linux). */
export function residentBytes(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kb) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kb) * 1024;
}
