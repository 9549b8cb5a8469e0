// OpenTelemetry tracing for workers, on when AGENTS_OTEL=1 or an OTLP endpoint is set: workflow, activity
// and client spans through @temporalio/interceptors-opentelemetry, exported over OTLP/HTTP.
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';

export interface Tracing {
  plugin: OpenTelemetryPlugin;
  /** Flushes spans still batched and stops exporting. */
  shutdown(): Promise<void>;
}

/** Whether the settings (src/config.ts) ask for tracing. */
export function tracingEnabled(
  config: Partial<Record<'AGENTS_OTEL' | 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', string>>,
): boolean {
  return (
    config.AGENTS_OTEL === '1' ||
    config.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ||
    config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined
  );
}

/** The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS itself; default http://localhost:4318. */
export function startTracing(serviceName: string): Tracing {
  const resource = new Resource({ 'service.name': process.env.OTEL_SERVICE_NAME || serviceName });
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: 1000 });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  const plugin = new OpenTelemetryPlugin({ resource, spanProcessor, tracer: provider.getTracer('managed-agents') });
  return { plugin, shutdown: () => provider.shutdown() };
}
