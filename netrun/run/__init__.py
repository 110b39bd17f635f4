"""Running a scenario: connect and probe the hosts, run each test (in rounds
when parallel), build and save each sample, the MTU settings of a run.

May import: netrun.scenario and below.
"""
