// The API's resources as the console reads them (the fields it shows; the SDK's types have the rest).
import type { Usage } from './formatters';

export interface Agent {
  id: string;
  name: string;
  version: number;
  model: string | { id: string };
  archived_at: string | null;
}

export interface Environment {
  id: string;
  name: string;
  archived_at: string | null;
}

export interface Session {
  id: string;
  title: string | null;
  status: 'rescheduling' | 'running' | 'idle' | 'terminated';
  agent: Agent;
  environment_id: string;
  usage: Usage;
  created_at: string;
  archived_at: string | null;
}

export const modelOf = (agent: Pick<Agent, 'model'>): string =>
  typeof agent.model === 'string' ? agent.model : (agent.model?.id ?? '');
