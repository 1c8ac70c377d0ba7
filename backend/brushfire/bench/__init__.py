"""`brushfire bench`: replay interaction traces over WebSockets against Brushfire and
baseline engines, check the replies against SQL, report latencies (docs/trace.md)."""
