// The team's members: configured per node (CAPLO_TEAM_MEMBERS) or managed in the store (caplo member), found at each request.
export * from "./teamDirectory.ts";
export * from "./managedMembers.ts";
