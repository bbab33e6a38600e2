// Launcher runs JMeter's non-GUI driver with every class allowed by XStream's security
// framework. Debian pairs JMeter 2.13 with XStream 1.4.20, which by default refuses every class of
// a test plan: `jmeter -n -t plan.jmx` then prints ForbiddenClassException, runs nothing and
// still exits 0. JMeter 5.x needs none of this; the project uses it to run its example plan
// with Debian's JMeter in CI (hack/load-tools.sh).
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

import com.thoughtworks.xstream.XStream;
import com.thoughtworks.xstream.security.AnyTypePermission;
import org.apache.jmeter.NewDriver;
import org.apache.jmeter.util.JMeterUtils;

public final class Launcher {
    public static void main(String[] args) throws Exception {
        String home = System.getProperty("jmeter.home", "/usr/share/jmeter");
        JMeterUtils.setJMeterHome(home);
        JMeterUtils.loadJMeterProperties(home + "/bin/jmeter.properties");
        Class<?> saveService = Class.forName("org.apache.jmeter.save.SaveService");
        for (Field f : saveService.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && XStream.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                ((XStream) f.get(null)).addPermission(AnyTypePermission.ANY);
            }
        }
        NewDriver.main(args);
    }
}
