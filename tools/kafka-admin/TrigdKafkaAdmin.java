// The admin requests tools/services makes of a secure broker: SCRAM users and ACLs, through
// Kafka's own Admin client (the Maven jars carry no kafka-acls / kafka-configs tool).
//
// usage: java -cp 'LIBS/*:CLASSES' TrigdKafkaAdmin CLIENT.properties < commands
// One command a line (blank lines and # comments skipped):
//   user NAME PASSWORD                              a SCRAM-SHA-512 user (created or re-set)
//   allow PRINCIPAL OPERATION TYPE PATTERN NAME     an ACL: e.g. allow User:trigd READ TOPIC PREFIXED e2e.
//   deny-all-check                                  nothing; kept for symmetry of scripts
// Exit 1 with the broker's message when a request fails.
import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

public class TrigdKafkaAdmin {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    try (FileInputStream in = new FileInputStream(args[0])) {
      props.load(in);
    }
    List<UserScramCredentialAlteration> users = new ArrayList<>();
    List<AclBinding> acls = new ArrayList<>();
    BufferedReader r = new BufferedReader(new InputStreamReader(System.in));
    int n = 0;
    for (String line; (line = r.readLine()) != null; ) {
      n++;
      line = line.trim();
      if (line.isEmpty() || line.startsWith("#")) continue;
      String[] w = line.split("\\s+");
      if (w[0].equals("user") && w.length == 3) {
        users.add(new UserScramCredentialUpsertion(
            w[1], new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), w[2]));
      } else if (w[0].equals("allow") && w.length == 6) {
        acls.add(new AclBinding(
            new ResourcePattern(ResourceType.fromString(w[3]), w[5], PatternType.fromString(w[4])),
            new AccessControlEntry(w[1], "*", AclOperation.fromString(w[2]), AclPermissionType.ALLOW)));
      } else {
        System.err.println("kafka-admin: line " + n + ": expected `user NAME PASSWORD` or "
            + "`allow PRINCIPAL OPERATION TYPE PATTERN NAME`");
        System.exit(1);
      }
    }
    try (Admin admin = Admin.create(props)) {
      if (!users.isEmpty()) admin.alterUserScramCredentials(users).all().get();
      if (!acls.isEmpty()) admin.createAcls(acls).all().get();
    } catch (Exception e) {
      System.err.println("kafka-admin: " + e.getMessage());
      System.exit(1);
    }
  }
}
