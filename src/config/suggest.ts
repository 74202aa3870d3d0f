/** Edit distance, for "did you mean …?" on typos in field and object names. */
export function levenshtein(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** The candidates close to `word`, closest first: small edit distance, a case-only difference, or containment. */
export function closest(word: string, candidates: Iterable<string>, max = 3): string[] {
  const w = word.toLowerCase();
  const limit = Math.max(1, Math.min(3, Math.floor(word.length / 3)));
  const scored: { c: string; d: number }[] = [];
  for (const c of candidates) {
    const l = c.toLowerCase();
    let d = levenshtein(w, l);
    if (d > limit && w.length >= 3 && (l.includes(w) || w.includes(l))) d = limit;
    if (d <= limit) scored.push({ c, d });
  }
  scored.sort((x, y) => x.d - y.d || (x.c < y.c ? -1 : 1));
  return scored.slice(0, max).map((s) => s.c);
}
