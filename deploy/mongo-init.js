// Run once by the mongo-init service of deploy/compose.yaml (mongosh, signed in as the root user):
// initiates the replica set rs0 over the three members, waits for a primary, and creates Keel's own
// user with readWrite on Keel's database only. Both steps are skipped when already done, so the
// service may run again on every `docker compose up`.
const replicaSet = "rs0";
const members = ["mongo-1:27017", "mongo-2:27017", "mongo-3:27017"];

try {
  rs.status();
} catch (error) {
  if (error.codeName !== "NotYetInitialized") throw error;
  rs.initiate({
    _id: replicaSet,
    // mongo-1 is preferred as primary; any member takes over when it is down.
    members: members.map((host, index) => ({ _id: index, host, priority: index === 0 ? 2 : 1 })),
  });
}

for (let waited = 0; !db.hello().isWritablePrimary; waited += 1) {
  if (waited > 120) throw new Error("no primary after 120 s");
  sleep(1000);
}

const admin = db.getSiblingDB("admin");
const user = process.env.MONGODB_USERNAME;
const database = "keel"; // Keel's mongodb_database setting (its default)
if (!admin.getUser(user)) {
  admin.createUser({ user, pwd: process.env.MONGODB_PASSWORD, roles: [{ role: "readWrite", db: database }] });
  print(`created MongoDB user ${user} (readWrite on ${database})`);
}
print(`replica set ${replicaSet} ready: ${members.join(", ")}`);
