// RegexCheck answers, with the JDK's own java.util.regex, the cases the javaregex package's tests
// state as Java's answers (internal/sts/javaregex: TestJavaAgrees writes them, runs this, and
// compares). Each input line is a case, its fields Base64 of UTF-8:
//
//   C <pattern> <input>   answered "<find> <matches>" (true/false), or "rejected <message>"
//   R <pattern>           answered "rejected" or "accepted"
//
// The first output line is the JDK's feature version (17, 21, ...).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

public class RegexCheck {
    static String field(String b64) {
        return new String(Base64.getDecoder().decode(b64), StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        out.append(Runtime.version().feature()).append('\n');
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.split(" ", -1);
            Pattern p;
            try {
                p = Pattern.compile(field(f[1]));
            } catch (PatternSyntaxException e) {
                out.append("rejected ").append(e.getDescription().replace('\n', ' ')).append('\n');
                continue;
            }
            if (f[0].equals("R")) {
                out.append("accepted\n");
                continue;
            }
            String input = field(f[2]);
            out.append(p.matcher(input).find()).append(' ').append(p.matcher(input).matches()).append('\n');
        }
        System.out.print(out);
    }
}
