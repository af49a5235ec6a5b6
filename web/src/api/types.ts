// Types of the REST API's JSON (see /api/v1/openapi.json). Only the fields
// the UI reads are listed.

export type SyncStatus = 'Synced' | 'OutOfSync' | 'Unknown' | string;
export type HealthStatus =
  | 'Healthy'
  | 'Suspended'
  | 'Progressing'
  | 'Missing'
  | 'Degraded'
  | 'Unknown'
  | string;

/** An RFC 9457 problem document. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  field?: string;
}

export interface UserInfo {
  name: string;
  groups: string[];
  kind: string;
  expiresAt?: string;
}

/** One row of GET /api/v1/applications and of its stream. */
export interface AppSummary {
  name: string;
  project: string;
  sync: SyncStatus;
  health: HealthStatus;
  revision?: string;
  cluster?: string;
  namespace?: string;
  repos?: string[];
  labels?: Record<string, string>;
  /** The subject of the revision's commit, when known. */
  revisionMessage?: string;
  // Shown when the server sends them (not every version does).
  lastSyncedAt?: string;
  /** The latest sync's result: Succeeded, Failed, Terminated… */
  lastSyncPhase?: string;
  operation?: string;
}

/** Set on an answer that is the last known one: the workflow engine does not answer. */
export interface Stale {
  unavailableSince: string;
  asOf: string;
}

export interface AppList {
  items: AppSummary[];
  next?: string;
  stale?: Stale;
}

export interface ResourceKey {
  group?: string;
  kind: string;
  namespace?: string;
  name: string;
}

export interface Source {
  repoURL: string;
  path?: string;
  targetRevision?: string;
  chart?: string;
  ref?: string;
  /** Argo CD's source name, when the app names its sources. */
  name?: string;
}

export interface Application {
  name: string;
  project?: string;
  source?: Source;
  sources?: Source[];
  destination?: { server?: string; namespace?: string };
  syncPolicy?: {
    automated?: { prune?: boolean; selfHeal?: boolean; allowEmpty?: boolean } | null;
    syncOptions?: string[];
  };
  refreshSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Free-form information about the app, shown to its users (Argo CD's spec.info). */
  info?: { name: string; value: string }[];
  /** Apps each sync waits for: "<name>" in the app's project or "<project>/<name>". */
  dependsOn?: string[];
}

/** A dependency a pending sync waits for, and why. */
export interface DependencyWait {
  app: { project: string; name: string };
  reason: string;
}

export interface ResourceStatus extends ResourceKey {
  version?: string;
  status: SyncStatus;
  health: HealthStatus;
  healthMessage?: string;
  /** When health last changed, from the health log. */
  healthLastTransitionTime?: string;
  message?: string;
  requiresPruning?: boolean;
  diff?: string;
}

export interface ResourceResult extends ResourceKey {
  action: string;
  message?: string;
  phase?: string;
  wave?: number;
  hook?: boolean;
  health?: HealthStatus;
}

export interface Step {
  phase: string;
  wave: number;
  resources: number;
}

export interface Operation {
  syncID: string;
  phase: string;
  initiator?: string;
  startedAt?: string;
  step?: Step;
  stepIndex?: number;
  steps?: number;
  resources?: ResourceResult[];
  awaitingApproval?: ResourceKey[];
  /** The dependencies a Pending sync waits for before it starts. */
  waitingFor?: DependencyWait[];
}

export interface AppEvent {
  time: string;
  type: string;
  reason: string;
  message: string;
  object?: { kind?: string; namespace?: string; name?: string };
  source?: string;
}

/** The commit a revision resolved to: its subject, author and date. */
export interface RevisionMetadata {
  message?: string;
  author?: string;
  date?: string;
}

export interface AppStatus {
  sync: SyncStatus;
  health: HealthStatus;
  /** When health last changed, from the health log. */
  healthLastTransitionTime?: string;
  revision?: string;
  sha?: string;
  revisionMetadata?: RevisionMetadata;
  resources?: ResourceStatus[];
  reconciledAt?: string;
  message?: string;
  operation?: Operation | null;
  awaitingDeletionApproval?: ResourceKey[];
  events?: AppEvent[];
  /** The skip-reconcile annotation pauses the app. */
  reconcileSkipped?: boolean;
  orphanedResources?: OrphanedResources;
  /** The last compare's warnings, such as rendered kinds that are excluded. */
  conditions?: AppCondition[];
}

export interface AppCondition {
  type: string;
  message: string;
}

export interface OrphanedResources {
  count: number;
  resources?: ResourceKey[];
  warning?: string;
}

export interface SyncSummary {
  id: string;
  revision: string;
  sha: string;
  revisionMessage?: string;
  prune?: boolean;
  phase: string;
  message?: string;
  initiator?: string;
  startedAt?: string;
  finishedAt?: string;
  attempts?: number;
}

export interface AppView {
  spec: Application;
  status: AppStatus;
  history?: SyncSummary[];
  stale?: Stale;
  /** The running apps whose dependsOn names this one ("<project>/<name>"); GET /api/v1/applications/{name} only. */
  dependents?: string[];
}

export interface SyncRecord {
  id: string;
  status: string;
  started: string;
  finished?: string;
  /** retained: Temporal still has the sync; archived: only its archive does. */
  source?: 'retained' | 'archived';
  runID?: string;
  /** The sync's page in the Temporal UI (retained syncs only). */
  temporalURL?: string;
  /** The API path of the sync's full event history. */
  eventsURL?: string;
  initiator?: string;
  revision?: string;
  sha?: string;
  revisionMessage?: string;
}

/** GET .../syncs/{seq}/events: a sync's Temporal event history. */
export interface SyncEvents {
  id: string;
  runID: string;
  source: 'retained' | 'archived';
  events: { eventId?: string; eventTime?: string; eventType?: string; [attrs: string]: unknown }[];
}

export interface SyncList {
  items: SyncRecord[];
  next?: string;
}

/** One object of GET .../tree: managed objects and their descendants. */
export interface TreeNode extends ResourceKey {
  version?: string;
  uid: string;
  parents?: string[];
  managed?: boolean;
  health?: HealthStatus;
  healthMessage?: string;
  createdAt?: string;
}

export interface Tree {
  nodes: TreeNode[];
  truncated?: boolean;
}

export type KubeObject = Record<string, unknown>;

export interface DiffResource extends ResourceKey {
  status: SyncStatus;
  live: KubeObject | null;
  desired: KubeObject | null;
  diff?: string;
}

export interface DiffResponse {
  revision?: string;
  resources: DiffResource[];
}

export interface ManifestsResponse {
  revision?: string;
  manifests: KubeObject[];
}

export interface EventsResponse {
  events: AppEvent[];
}

export interface SyncRequest {
  revision?: string;
  prune?: boolean;
  dryRun?: boolean;
  resources?: ResourceKey[];
  strategy?: string;
}

export interface DeleteResult {
  awaitingApproval?: ResourceKey[];
}

export interface Project {
  name: string;
  description?: string;
  sourceRepos?: string[];
  destinations?: { server?: string; namespace?: string }[];
  roles?: { name: string; description?: string; policies?: string[]; groups?: string[] }[];
  syncWindows?: { kind: string; schedule: string; duration: string }[];
  [k: string]: unknown;
}

export interface RepositoryView {
  url: string;
  project?: string;
  username?: string;
  hasPassword: boolean;
  hasToken: boolean;
  hasSSHKey: boolean;
  insecureIgnoreHostKey?: boolean;
  type?: string;
  hasClientCert?: boolean;
  hasCA?: boolean;
  insecure?: boolean;
  proxy?: string;
  noProxy?: string;
  passCredentials?: boolean;
  githubAppID?: number;
  githubAppInstallationID?: number;
  hasGithubAppPrivateKey?: boolean;
  githubAppEnterpriseBaseUrl?: string;
}

export interface ClusterView {
  name: string;
  server: string;
  hasCredentials: boolean;
  insecure?: boolean;
  labels?: Record<string, string>;
}

export interface Account {
  name: string;
  enabled: boolean;
  capabilities: string[];
}

export interface TokenInfo {
  id: string;
  subject: string;
  description?: string;
  issuedAt: string;
  expiresAt?: string;
}

export interface TokenResponse {
  token: string;
  id: string;
  expiresAt?: string;
}

export interface Items<T> {
  items: T[];
}

/** A permission to check: RBAC resource, action and object. */
export interface Check {
  resource: string;
  action: string;
  object: string;
}

export interface CheckResult extends Check {
  allowed: boolean;
}

export interface PolicyView {
  builtin: string;
  policy: string;
  projects: string;
  defaultRole?: string;
}

/** One worker's resource customizations (GET /settings/resource-customizations). */
export interface CustomizationsStatus {
  worker: string;
  source?: string;
  /** What set the source: the worker's flags (which win) or the settings API. */
  origin?: 'flags' | 'settings';
  revision?: string;
  loadedAt?: string;
  error?: string;
  failedAt?: string;
  actionKinds: number;
}

/** The Git source of the workers' scripts set through the API (PUT /settings/resource-customizations); an empty repoURL means none. */
export interface CustomizationsSource {
  repoURL: string;
  path?: string;
  revision?: string;
}

export interface CustomizationsView {
  setting: CustomizationsSource;
  workers: CustomizationsStatus[];
}

export interface SSOConfig {
  enabled: boolean;
  name?: string;
  /** Starts the browser's login; add ?return=<path>. */
  loginURL?: string;
}

/** A parameter of a resource action. */
export interface ResourceActionParam {
  name: string;
  type?: string;
  default?: string;
}

/** An action available for a resource. */
export interface ResourceAction {
  name: string;
  disabled?: boolean;
  params?: ResourceActionParam[];
  source: 'builtin' | 'lua';
}

export interface ActionsView {
  resource: ResourceKey;
  actions: ResourceAction[];
}

export interface RunActionView {
  resource: ResourceKey;
  action: string;
  changes: { operation: 'patch' | 'create'; resource: ResourceKey }[];
}

/** One change of health, of the app (no resource) or of one resource. */
export interface HealthTransition {
  time: string;
  resource?: ResourceKey;
  from?: HealthStatus;
  to: HealthStatus;
  message?: string;
}

export interface HealthHistory {
  transitions: HealthTransition[];
}

/** NotificationRecord is the outcome of one notification delivery. */
export interface NotificationRecord {
  time: string;
  key: string;
  trigger: string;
  template: string;
  service: string;
  recipient?: string;
  oncePer?: string;
  result: 'Sent' | 'Failed';
  attempts?: number;
  error?: string;
}

/** NotificationsView is the notifications configuration; it holds $references, never credentials. */
export interface NotificationsView {
  config: string;
  services: { name: string; type: string }[];
  triggers: string[];
  templates: string[];
}

/** One row of GET /api/v1/applicationsets and of its stream. */
export interface AppSetSummary {
  name: string;
  /** The template's project, by which RBAC names the set. */
  project: string;
  apps: number;
  generated: number;
  error?: string;
  repos?: string[];
  /** Each generator's kind and what it reads ("git directories envs apps/*"), as the set's last pass recorded them. */
  generators?: string[];
}

/** A generator of an ApplicationSet (Argo CD's shape; only what the UI reads). */
export interface AppSetGenerator {
  list?: { elements?: unknown[]; elementsYaml?: string };
  clusters?: { selector?: unknown };
  git?: { repoURL: string; revision?: string; directories?: { path: string; exclude?: boolean }[]; files?: { path: string }[] };
  matrix?: { generators: AppSetGenerator[] };
  merge?: { generators: AppSetGenerator[]; mergeKeys?: string[] };
  plugin?: { configMapRef?: { name: string } };
  pullRequest?: Record<string, unknown>;
  scmProvider?: Record<string, unknown>;
  clusterDecisionResource?: unknown;
  selector?: unknown;
}

export interface LabelExpression {
  key: string;
  operator: string;
  values?: string[];
}

/** An Argo CD ApplicationSet, as the API answers it. */
export interface ApplicationSet {
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    goTemplate?: boolean;
    generators: AppSetGenerator[];
    template: { metadata?: { name?: string; labels?: Record<string, string> }; spec?: { project?: string } };
    syncPolicy?: { applicationsSync?: string; preserveResourcesOnDeletion?: boolean };
    strategy?: {
      type?: string;
      rollingSync?: { steps?: { matchExpressions?: LabelExpression[]; maxUpdate?: number | string }[] };
      deletionOrder?: string;
    };
  };
}

/** What the last pass of a set that changed apps did. */
export interface AppSetChange {
  apps?: string[] | null;
  generated: number;
  created?: string[];
  updated?: string[];
  deleted?: string[];
  kept?: string[];
}

export interface AppSetStatus {
  /** "<project>/<name>", sorted: the generator output of the last pass. */
  apps: string[];
  generated: number;
  error?: string;
  errorKind?: string;
  lastEvaluatedAt?: string;
  lastReason?: string;
  lastChange?: AppSetChange;
  passes: number;
  deleting?: boolean;
}

/** A set's app with its sync and health. */
export interface AppSetChild {
  project: string;
  name: string;
  sync: SyncStatus;
  health: HealthStatus;
}

/** GET /api/v1/applicationsets/{name}. */
export interface AppSetDetail {
  set: ApplicationSet;
  status: AppSetStatus;
  applications: AppSetChild[];
  /** Each generator's kind and what it reads, in order. */
  generators: string[];
}

/** POST /api/v1/applicationsets/generate: the apps the set would make. */
export interface AppSetPreview {
  applications: { application: Application; generator: string; element: number }[];
}

export interface RolloutAppStatus {
  project: string;
  name: string;
  phase: 'Waiting' | 'Syncing' | 'Healthy' | 'Failed' | string;
  syncID?: string;
  attempt?: number;
  message?: string;
}

export interface RolloutStepStatus {
  phase: 'Waiting' | 'Progressing' | 'Halted' | 'Completed' | string;
  maxUpdate: number;
  apps: RolloutAppStatus[];
}

/** GET /api/v1/applicationsets/{name}/rollout. */
export interface RolloutStatus {
  set: string;
  project?: string;
  target: string;
  phase: 'Progressing' | 'Paused' | 'Halted' | 'Completed' | 'Aborted' | 'Failed' | string;
  message?: string;
  step: number;
  steps: RolloutStepStatus[];
  haltedBy?: string;
  unmatched?: string[];
}

export interface AppSetList {
  items: AppSetSummary[];
}

/** DELETE /api/v1/applicationsets/{name}: the apps deleted with the set. */
export interface AppSetDeleteResult {
  deleted?: string[];
}
