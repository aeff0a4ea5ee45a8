package io.github.pirexbench.jparest.system;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.util.ContentCachingResponseWrapper;

/**
 * Measures the service's own handling time of every request and returns it in the response header
 * {@value #HEADER} (nanoseconds, {@link System#nanoTime()}), so that the load driver can subtract
 * it from its response time: what remains is the network, Tomcat's HTTP parsing and writing, and
 * the driver itself.
 *
 * <p>The interval runs from this filter's entry (the first filter, after Tomcat has parsed the
 * request) until the response body is complete in memory: everything Spring MVC, Jackson,
 * Hibernate, HikariCP and the database do. The body is held back until then (a few hundred bytes),
 * because Jackson flushes the stream, which would commit the response before the header could be
 * set. Writing the body to the socket is therefore not included.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE)
public class ServiceTimeFilter extends OncePerRequestFilter {

  /** The response header holding the service time in nanoseconds. */
  public static final String HEADER = "X-Service-Time-Ns";

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    long start = System.nanoTime();
    ContentCachingResponseWrapper held = new ContentCachingResponseWrapper(response);
    try {
      chain.doFilter(request, held);
    } finally {
      long elapsed = System.nanoTime() - start;
      if (!response.isCommitted()) {
        response.setHeader(HEADER, Long.toString(elapsed));
      }
      held.copyBodyToResponse();
    }
  }
}
