// The shell blocks of a Markdown file, for tests that run what a document
// tells an operator to paste (test/docs/readme.test.ts and the tests a block
// names with `<!-- verified by test/FILE -->`).

export interface ShellBlock {
  line: number;
  code: string;
  verifiedBy: string | null;
}

/** The ```sh / ```bash / ```shell blocks of a Markdown text, with the test that runs each elsewhere, if any. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    if (!/^```(sh|bash|shell)\s*$/.test(lines[i]!)) continue;
    const start = i;
    const body: string[] = [];
    for (i += 1; i < lines.length && !/^```\s*$/.test(lines[i]!); i += 1) body.push(lines[i]!);
    let previous = start - 1;
    while (previous >= 0 && lines[previous]!.trim() === '') previous -= 1;
    const verified = previous >= 0 ? /<!--\s*verified by (\S+)\s*-->/.exec(lines[previous]!) : null;
    blocks.push({ line: start + 1, code: body.join('\n'), verifiedBy: verified ? verified[1]! : null });
  }
  return blocks;
}
