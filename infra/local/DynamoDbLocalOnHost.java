import java.io.IOException;
import java.lang.reflect.Field;
import java.util.Arrays;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * DynamoDB Local listening on one address only. Its command line has no such option and its
 * Jetty server listens on every interface, so the local platform starts it through this
 * launcher (run by java as a source file, on DynamoDBLocal.jar's class path), which binds
 * the server's connector to the given address before starting it.
 *
 * It also exits when the platform process is gone, however it ended (a kill -9 included):
 * its stdin is a pipe from that process, which nobody writes to, and whose end is read as
 * end of file. It runs in a process group of its own (so that a Ctrl-C reaches only the
 * platform, which stops it last), so this is what keeps it from outliving the platform.
 *
 * Usage: java -cp DynamoDBLocal.jar DynamoDbLocalOnHost.java HOST [DynamoDB Local options]
 */
public class DynamoDbLocalOnHost {
  public static void main(String[] args) throws Exception {
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // nothing is sent: only the end matters
        }
      } catch (IOException e) {
        // a broken pipe is an end too
      }
      System.exit(0);
    }, "exit-with-parent");
    watchdog.setDaemon(true);
    watchdog.start();
    String host = args[0];
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(Arrays.copyOfRange(args, 1, args.length));
    // DynamoDBProxyServer keeps its Jetty server private and offers no way to set the host.
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    Connector[] connectors = server.getConnectors();
    if (connectors.length == 0) throw new IllegalStateException("DynamoDB Local has no connector to bind");
    for (Connector connector : connectors) ((ServerConnector) connector).setHost(host);
    proxy.start();
  }
}
