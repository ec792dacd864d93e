/** The bench's cold-start rows and tables: each function's import against hello-world and the clients-only reference. */
import { clientsRatio, coldStartRatio, type ColdStart } from './cold-start.js';
import { fmt, markdownTable, median, ms, yes } from './stats.js';

export function coldRows(cold: ColdStart[]): string[][] {
  const clients = cold.find((c) => c.reference);
  const rows = cold.map((c) => {
    const ratio = coldStartRatio(c);
    if (c.reference)
      return [
        'cold start: hello-world + Firestore and Pub/Sub clients only × hello-world',
        'reference',
        `${fmt(ratio, 2)}×`,
        'info',
      ];
    return [`cold start \`${c.name}\` × hello-world`, '≤ 1.5×', `${fmt(ratio, 2)}×`, yes(ratio <= 1.5)];
  });
  for (const c of cold) {
    if (c.reference) continue;
    const label = `cold start \`${c.name}\` × clients-only reference (same rounds)`;
    if (!clients) {
      rows.push([label, '≤ 0.5×', 'not run', 'NO']);
      continue;
    }
    const ratio = clientsRatio(c, clients);
    rows.push([label, '≤ 0.5×', `${fmt(ratio, 2)}×`, yes(ratio <= 0.5)]);
  }
  return rows;
}

export function coldTable(cold: ColdStart[]): string {
  const clients = cold.find((c) => c.reference);
  const rows = cold.map((c) => [
    c.reference ? 'hello-world + Firestore and Pub/Sub clients (reference)' : c.name,
    ms(median(c.helloMs)),
    ms(median(c.importMs)),
    `${fmt(coldStartRatio(c), 2)}×`,
    clients && !c.reference ? `${fmt(clientsRatio(c, clients), 2)}×` : '—',
    String(c.ratios.length),
  ]);
  const header = [
    'function',
    'hello-world import',
    'import',
    '× hello-world (median of pairs)',
    '× clients only',
    'pairs',
  ];
  return markdownTable(header, rows);
}

export function importTable(imports: { name: string; importMs: number }[]): string {
  return markdownTable(
    ['package', 'import alone (median)'],
    imports.map((i) => [`\`${i.name}\``, ms(i.importMs)]),
  );
}
