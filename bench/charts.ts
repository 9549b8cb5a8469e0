// PNG charts of the results: Vega-Lite specs rendered to SVG by Vega in Node, rasterised by resvg (no canvas,
// no browser, nothing downloaded at run time).
import fs from 'node:fs';
import type { BenchResult } from './lib';

async function toPng(spec: Record<string, unknown>): Promise<Buffer> {
  const vega = await import('vega');
  // ESM only, and its types need a newer moduleResolution than the project's: typed here by what is used.
  const vl = (await import('vega-lite' as string)) as { compile(spec: unknown): { spec: import('vega').Spec } };
  const { Resvg } = await import('@resvg/resvg-js');
  const compiled = vl.compile({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    background: 'white',
    ...spec,
  }).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  const svg = await view.toSVG();
  await view.finalize();
  return new Resvg(svg, {
    fitTo: { mode: 'zoom', value: 2 },
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
    background: 'white',
  })
    .render()
    .asPng();
}

/** p50 and p95 of each arm, side by side. */
export async function armsChart(result: BenchResult, file: string, title = result.name): Promise<void> {
  const values = Object.entries(result.arms).flatMap(([arm, s]) => [
    { arm, stat: 'p50', ms: s.p50Ms },
    { arm, stat: 'p95', ms: s.p95Ms },
  ]);
  const png = await toPng({
    title: { text: title, subtitle: 'median and p95 per arm, ms (interleaved arms)' },
    data: { values },
    width: { step: 22 },
    height: 260,
    mark: { type: 'bar', tooltip: false },
    encoding: {
      x: { field: 'arm', type: 'nominal', title: null, sort: null, axis: { labelAngle: -30 } },
      xOffset: { field: 'stat' },
      y: { field: 'ms', type: 'quantitative', title: 'ms' },
      color: { field: 'stat', type: 'nominal', title: null, scale: { range: ['#4c78a8', '#f58518'] } },
    },
  });
  fs.writeFileSync(file, png);
}

/** One or more series of y against x. */
export async function lineChart(
  values: { x: number; y: number; series: string }[],
  file: string,
  opts: { title: string; subtitle?: string; x: string; y: string },
): Promise<void> {
  const png = await toPng({
    title: { text: opts.title, ...(opts.subtitle ? { subtitle: opts.subtitle } : {}) },
    data: { values },
    width: 420,
    height: 260,
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'x', type: 'quantitative', title: opts.x },
      y: { field: 'y', type: 'quantitative', title: opts.y },
      color: { field: 'series', type: 'nominal', title: null },
    },
  });
  fs.writeFileSync(file, png);
}
