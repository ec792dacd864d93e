/** USD as the CLI and the dashboard show it: to the hundredth of a cent below a dollar's tenth (`$0.0251`), else cents (`$1.20`). */
export const usd = (n: number): string => `$${n < 0.1 ? n.toFixed(4) : n.toFixed(2)}`;
