/** Writes the machine's table of rows into docs/architecture.md, between its markers (`npm run docs:machine`). */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { withMachineTable } from '../src/machine/graph';

const file = path.join(__dirname, '..', 'docs', 'architecture.md');
writeFileSync(file, withMachineTable(readFileSync(file, 'utf8')));
console.log(`wrote the machine's table into ${path.relative(process.cwd(), file)}`);
